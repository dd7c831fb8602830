"""One module per rule file (rules/<stage>.smk): the stage's input functions
and job bodies. Only the rules, the scripts/ entry points and the command
line import these modules."""

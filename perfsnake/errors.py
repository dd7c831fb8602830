"""The one error type users see for bad campaigns and configurations."""


class CampaignError(Exception):
    """A campaign or configuration problem, phrased as one line.

    The message names the file, the key and the problem, e.g.
    ``config/campaigns/x.yaml: variables.nb_threads: duplicate value 4``.
    """

    def __init__(self, source: str, key: str, problem: str) -> None:
        self.source = source
        self.key = key or "(top level)"
        self.problem = problem
        super().__init__(f"{source}: {self.key}: {problem}")


def did_you_mean(name: str, choices: list[str]) -> str:
    """' (did you mean 'x'?)' for the closest choice, or ''."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""

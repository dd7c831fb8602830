"""The statistics of perfsnake, in one place (issue 34).

- subsessions: autocorrelation, merging samples into subsessions, the
  AR(1)-corrected variance of a mean (what intervals and tests share);
- intervals: the interval of the mean and the median's exact
  order-statistic interval, and the words captions use for each method;
- summaries: a record's summary (summary.csv) and its stability checks;
- tests: Welch's comparisons of two records and the one multiplicity
  adjustment every family of tests goes through;
- changepoints: binary segmentation (ruptures) and the warm-up/cool-down cut;
- modes: two groups of runs where one result would be reported;
- decide: the sequential three-outcome comparison (statistics.decide);
- noise_floor: the layout noise floor from variance components;
- records: a campaign's results as samples per record, the pairs one
  variable apart, the statistics options and the tables written back.

Submodules import numpy, scipy and ruptures; nothing is imported here, so that
naming the package costs no start-up time.
"""

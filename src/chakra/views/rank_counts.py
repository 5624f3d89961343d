"""How many ranks the pictures of a whole job show, apart from :mod:`chakra.views.job`
(which loads numpy), so that ``chakra_pipeline --help`` states it without loading it."""

#: Up to this many ranks the terminal summary, ``utilisation.png`` and report.html list every
#: rank; above it they pick the slowest, median and fastest (:meth:`JobSummary.featured_ranks`).
ALL_RANKS_UP_TO = 16

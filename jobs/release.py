"""spark-submit entry point of the dpspark release job, for every mechanism (histograms, answers, samples, learners,
grouped aggregates).

    spark-submit --properties-file conf/spark-defaults.conf \
        jobs/release.py --config conf/product_learner.toml [--output PATH]
    spark-submit --properties-file conf/spark-defaults.conf \
        jobs/release.py --config conf/groups-public-keys.toml [--output PATH]

The properties file keeps Spark quiet (warnings only) with its UI off; without
it the job still turns the UI off and sets the WARN log level when the SparkContext
starts, unless your Spark conf sets ``spark.ui.enabled`` / ``spark.log.level``.

The same code path as ``dpspark release`` (dpspark.engine.runner.run_release), which dispatches on the config's
``privacy.mechanism``; here the SparkSession comes from spark-submit (master, resources, --py-files).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, validate the config before Spark starts, run the release."""
    from dpspark.cli.app import main as cli_main

    args = list(sys.argv[1:] if argv is None else argv)
    return cli_main(["release", "--use-active-spark", *args])


if __name__ == "__main__":
    sys.exit(main())

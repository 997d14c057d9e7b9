"""spark-submit entry point kept under its first name: the same job as ``jobs/release.py`` (any mechanism).

    spark-submit --properties-file conf/spark-defaults.conf \
        jobs/release_histogram.py --config conf/queries-stability.toml [--output PATH]
"""

from __future__ import annotations

import sys

from release import main  # spark-submit puts this file's folder first on sys.path

if __name__ == "__main__":
    sys.exit(main())

"""Spark integration: Java discovery, a local session helper, universe indexes as Spark columns.

Importing this package does not import pyspark; the submodules do so lazily.
"""

from dpspark.engine.spark.java import INSTALL_HINT, JavaNotFoundError, JavaRuntime, ensure_java_home, find_java
from dpspark.engine.spark.local import local_session

__all__ = ["INSTALL_HINT", "JavaNotFoundError", "JavaRuntime", "ensure_java_home", "find_java", "local_session"]

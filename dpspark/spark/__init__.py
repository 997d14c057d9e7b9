"""Spark integration: Java discovery, a local session helper, universe indexes as Spark columns.

Importing this package does not import pyspark; the submodules do so lazily.
"""

from dpspark.spark.java import INSTALL_HINT, JavaNotFoundError, JavaRuntime, ensure_java_home, find_java
from dpspark.spark.session import local_session

__all__ = ["INSTALL_HINT", "JavaNotFoundError", "JavaRuntime", "ensure_java_home", "find_java", "local_session"]

"""The release engine: validated specs, declarative stages, backends that compute them, and the job runner."""

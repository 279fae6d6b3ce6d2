"""The bundled Flower example app (see its pyproject.toml)."""

"""Data files of the report package (schema); a package so that they ship in wheels."""

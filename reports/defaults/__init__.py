"""Data files of the report package (defaults); a package so that they ship in wheels."""

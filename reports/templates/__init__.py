"""Data files of the report package (templates); a package so that they ship in wheels."""

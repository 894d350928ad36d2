"""Packages are found, not listed: every package under loaders/, plus the card templates.

The templates live in the top-level dataset_cards/ folder (setup.cfg maps it to `ragloaders.dataset_cards`); a
finder cannot discover a package whose folder lies outside loaders/, and setup.cfg cannot add one name to what
`find:` found, hence this file. `.ci/run` checks that the wheel holds every module and template of the tree.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages("loaders", include=["ragloaders", "ragloaders.*"]), "ragloaders.dataset_cards"])

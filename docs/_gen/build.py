"""mkdocs-gen-files script: writes the generated reference pages (``reference.py``) into the site."""

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).parent))
import reference

for path, text in reference.pages().items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(text)

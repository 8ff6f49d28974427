"""The generated documentation pages (``make docs``, ``tools/gen_docs.py``): each module
renders one page of ``docs/`` from the code it documents."""

"""mkdocs hook: serve bench/results/ as results/ in the site.

The pages cite benchmark figures by their result file; the PNG plots are
shown inline and every other file (JSON, logs) is linked, so both must be
part of the site. They are added here rather than copied into docs/, so each
result file lives in one place. A page links a result as
``../bench/results/NAME``, the path that works where the Markdown is read
as it is (on GitHub, in an editor); the site's copy of the page links
``results/NAME``. A page that cites a file bench/results/ does not hold gets
a broken link, which `mkdocs build --strict` fails on.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File


def on_files(files, config):
    results = Path(config.config_file_path).parent / "bench" / "results"
    for path in sorted(results.glob("*")):
        if path.is_file():
            files.append(File.generated(config, f"results/{path.name}",
                                        abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    return markdown.replace("](../bench/results/", "](results/")

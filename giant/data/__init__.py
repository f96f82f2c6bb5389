"""Benchmark data: MultiPathQA, your own task files, the synthetic demo set, and where each item's slide
lies.

`multipathqa` (`load_multipathqa`), `custom` (`load_task_file`), `demo` (`build_demo`), `slides`
(`locate_all`, `SlideLocation`), `check` (`check_slides`), `digest`, `defects`, `prompts` and `fetch`
(downloading the slides). The package root imports nothing: loading MultiPathQA pulls pandas and
the Hub client, the demo set OpenSlide's writers, while `defects` is a light record the job imports.
"""

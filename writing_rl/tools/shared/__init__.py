"""What several command families of ``writing_rl/tools/`` share: the judge settings of a training config
(``judge_settings``), the cached, bounded judge-call runner (``judge_runner``) and the judgments it returns
(``verdicts``), what a judged data command writes (``judged_run``), reading response and JSONL files
(``responses``, ``inputs``), composing our overlays (``verl_config``), one-line errors (``errors``) and
PNG plots (``plot``). A family imports only these and the layers below ``writing_rl.tools``."""

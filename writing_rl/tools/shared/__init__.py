"""What several command families of ``writing_rl/tools/`` share: the judge settings of a training config
(``judge_settings``), the offline tools' judge and its cached, bounded calls (``tool_judge``) and the
judgments they return (``verdicts``), a judged data command's job and what it writes (``judged_job``),
reading response and JSONL files (``responses``, ``inputs``), composing our overlays (``verl_config``),
one-line errors (``errors``) and PNG plots (``plot``). A family imports only these and the layers below
``writing_rl.tools``."""

"""The row builders, one module a kind of rows, each a ``writing_rl.data.builder.Builder`` that the
driver (``writing_rl.data.driver``) runs over an input:

- ``writing``: Writing-RL rows (prompt, criteria, references easiest first);
- ``prompts``: plain prompts or source texts to translate, for BRPO and GenRM group ranking;
- ``rubric``: prompts with weighted rubrics, for the rubric reward;
- ``gqm``: GRRM SFT conversations and RLVR rows from ranked candidate groups, reading groups with
  ``gqm_rows`` and augmenting them with ``gqm_augmentation``;
- ``preference``: pairwise GenRM SFT conversations and RL rows from preference pairs.

``data_prep/commands/`` parses each subcommand's options into its builder's settings."""

"""The row builders, one module a kind of rows (the list: docs/architecture.md), each a
``writing_rl.data.builder.Builder`` that the driver (``writing_rl.data.driver``) runs over an input;
``data_prep/commands/`` parses each subcommand's options into its builder's settings."""

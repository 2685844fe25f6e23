"""``writing-rl order-references``, candidate references ordered by judged quality: ``job`` (the settings of a
run), ``order_references`` (read, judge every pair, write Writing-RL rows and the report) and
``rank_aggregation`` (the math: Bradley-Terry, Copeland, intransitive triples)."""

"""What every command that judges files outside training shares (``score``, ``select``,
``order-references``, ``eval``, ``probe-judge``): the training config composed as ``main_ppo`` would
(``compose``), its judge behind an on-disk cache with bounded, resumable calls (``judge``), the judge's
endpoints checked first (``endpoints``), reading and writing files (``files``) and one-line errors
(``errors``)."""

"""verl's plugin entry point (group ``verl.plugins``): imported at the end of ``import verl`` in every
process of a run. With ``VERL_PLATFORM=cpu`` it registers the CPU backend; otherwise it does nothing
and imports nothing, so the CPU backend changes nothing on a GPU cluster."""

import os

from writing_rl.cpu_backend.platform_name import selected

if selected(os.environ):
    from writing_rl.cpu_backend.register import install

    install()

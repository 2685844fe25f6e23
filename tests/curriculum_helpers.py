"""What the in-process curriculum tests share: settings in a temp dir, and schedulers closed at teardown."""

import pytest

from writing_rl.curriculum.config import CurriculumConfig
from writing_rl.curriculum.scheduler import ReferenceScheduler


@pytest.fixture(autouse=True)
def closed_at_teardown():
    """Every scheduler a test builds in-process gives its WAL file back at teardown."""
    built, build = [], ReferenceScheduler.__init__

    def init(self, *args, **kwargs):
        build(self, *args, **kwargs)
        built.append(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ReferenceScheduler, "__init__", init)
        yield
    for scheduler in built:
        scheduler.close()


def settings(tmp_path, **kw):
    values = dict(state_dir=str(tmp_path / "state"), checkpoint_dir=str(tmp_path / "ckpt"))
    values.update(kw)
    return CurriculumConfig(**values)


def scheduler_alive() -> bool:
    """Whether this Ray job's curriculum scheduler actor exists (it goes with the workers that made it)."""
    import ray

    from writing_rl.curriculum.scheduler import scheduler_name

    try:
        ray.get_actor(scheduler_name())
    except ValueError:
        return False
    return True

"""A stand-in for ``ray.remote(cls).options(...).remote(*args)`` and for placement_options that records what a
module asked Ray for: the pinned tests of the named actors (the collector, the scheduler) read it."""


def recording_actor_factory():
    """(made, Remote, placement_options): ``Remote`` stands for ``ray.remote``; ``made`` gets the class, the
    options, the constructor's arguments and the placement asked for; ``.remote`` returns "handle"."""
    made = {}

    class Remote:
        def __init__(self, cls):
            made["cls"] = cls

        def options(self, **options):
            made["options"] = options
            return self

        def remote(self, *args):
            made["args"] = args
            return "handle"

    def placement_options(name, resources, key):
        made["placement"] = (name, resources, key)
        return {"resources": resources}

    return made, Remote, placement_options

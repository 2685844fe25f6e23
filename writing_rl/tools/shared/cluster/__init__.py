"""Training on a Ray cluster: what ``scripts/train_*.sh`` and ``scripts/tiny_train.sh`` do when ``RAY_ADDRESS`` is set.

``job_env``: the job's runtime environment (this repository as its working directory, the variables forwarded,
the interpreter on the cluster) and the size of the upload. ``client``: submit a job, follow its logs, stop or
leave it on Ctrl-C. ``demand``: what a composed config asks the cluster for, and whether the cluster can ever give
it. ``probe``: a small job run first with the same environment, which reports what the cluster has and what the
job will find there (the preflight's cluster check). ``submit``: the command the scripts call.
"""

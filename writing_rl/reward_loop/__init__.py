"""What runs inside verl's reward workers (docs/architecture.md).

At the top, the two reward managers and what they share (config, scoring, results, the failure policy, the
reward-fn contract, the per-run actors' handles and placement), the methods' advantage estimators and the batch builder;
``group/`` is the group rendezvous, ``curriculum/`` the reference curriculum, ``health/`` judge health."""

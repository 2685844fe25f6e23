"""The shadow judge (``reward.reward_kwargs.shadow``): a second judge scoring a random share of the training
rollouts, never changing a reward. ``ShadowScoring`` runs it in a reward worker (scoring.py); ``DriftWatch``
tells when the training judge's reward rises without the shadow's (watch.py); keys.py names what each sample
carries. Nothing is imported here, so that reading the keys loads no judge client."""

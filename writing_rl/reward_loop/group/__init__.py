"""The group rendezvous: how the rollouts of one prompt (verl's ``uid``) meet before a group reward fn runs
(docs/methods/group-rewards.md). ``GroupRewardManager`` (reward_loop/group_manager.py) drives it."""

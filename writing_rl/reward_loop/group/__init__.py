"""The group rendezvous: how the rollouts of one prompt (verl's ``uid``) meet before a group reward fn runs.

``rendezvous`` is a reward worker's side (a group it holds whole is scored there, with no round trip);
``collector`` is the named Ray actors' side (``GroupCollector`` shards gathering a uid's members from every
worker). ``GroupRewardManager`` (reward_loop/group_manager.py) drives them.
"""

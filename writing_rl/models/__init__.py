"""Real models that install from the package registry alone (no model hub): ``model_dir("smollm2")``."""

from writing_rl.models.packaged import MODELS, ModelUnavailable, check_folder, default_cache_dir, model_dir

__all__ = ["MODELS", "ModelUnavailable", "check_folder", "default_cache_dir", "model_dir"]

"""CodeRedEnv."""

"""Config: YAML read, validated and turned into values; opens nothing."""

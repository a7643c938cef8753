"""Pure rules and data shared by every layer: codecs, names, config, JSON. No I/O."""

"""Stand-ins for servers that cannot be installed here, built from upstream's specifications."""

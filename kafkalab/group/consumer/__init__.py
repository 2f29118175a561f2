"""KIP-848 consumer groups: filled in below."""

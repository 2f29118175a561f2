"""One module per API group; each exposes ``handle_<api>(broker, request) -> response body``."""

"""Model providers behind one async protocol, with pricing, rate limits and the call ledger.

`types` holds the protocol and its records (`Provider`, `Conversation`, `ModelTurn`, `Usage`, the
provider errors), `config` the settings the providers share and their union (`ProviderConfig`),
`providers/<name>/` each provider, `factory` builds the one a run names (`build_provider`,
`check_credentials`), `pricing` and `ledger` price and keep its calls. The package root imports
nothing: the config layer imports the light contracts without loading the providers' SDKs.
"""

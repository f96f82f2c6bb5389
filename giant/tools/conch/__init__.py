"""CONCH (a CoCa-style pathology vision-language model) behind the `conch` tool. Needs PyTorch (the
`conch` extra); nothing imports this package unless a run enables the tool."""

"""What several test packages share: factories, CLI environments and servers. Test modules import
from here, never from one another, so a module's tests and fixtures stay its own."""

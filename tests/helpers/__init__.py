"""What several test packages share: factories, CLI environments and servers. Test modules import
from here, never from one another (a test module imported elsewhere runs its tests twice' fixtures)."""

// Module DevProvider.

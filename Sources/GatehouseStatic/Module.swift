// Module GatehouseStatic.

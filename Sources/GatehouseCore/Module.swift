// Module GatehouseCore.

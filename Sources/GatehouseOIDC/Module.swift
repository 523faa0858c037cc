// Module GatehouseOIDC.

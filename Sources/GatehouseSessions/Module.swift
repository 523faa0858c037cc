// Module GatehouseSessions.

// Module Gatehouse.

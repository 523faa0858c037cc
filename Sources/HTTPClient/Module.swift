// Module HTTPClient.

"""schemathesis hooks for `cargo xtask api-fuzz`.

A bundle body (`application/gzip`, which schemathesis has no serializer
for) is sent as raw bytes, as `application/octet-stream` would be.
"""

import schemathesis

schemathesis.serializer.alias("application/gzip", "application/octet-stream")

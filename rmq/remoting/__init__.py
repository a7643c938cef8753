"""The RocketMQ 4.x remoting protocol: frames, headers, codes, asyncio server and client."""

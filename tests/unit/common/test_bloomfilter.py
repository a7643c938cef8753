"""Apache's consumer-filter bloom filter parameters (rmq.common.bloomfilter)."""

from __future__ import annotations

from rmq.common.bloomfilter import BloomFilter, murmur3_x64_128


def test_bits_and_hash_count_as_apaches() -> None:
    # BloomFilter.createByFn(f, n): k = ceil(log_0.5(f / 100)), m = n * log2(100 / f) * log2(e)
    # rounded up to whole bytes.
    assert (BloomFilter(20, 32).hash_count, BloomFilter(20, 32).bits) == (3, 112)
    assert (BloomFilter(10, 64).hash_count, BloomFilter(10, 64).bits) == (4, 312)
    assert BloomFilter(1, 1).bits == 16


def test_murmur3_reference_values() -> None:
    # Reference digests of MurmurHash3_x64_128 (seed 0) as Guava's murmur3_128 returns them.
    assert murmur3_x64_128(b"") == (0, 0)
    assert murmur3_x64_128(b"hello") == (0xCBD8A7B341BD9B02, 0x5B1E906A48AE1D19)
    assert murmur3_x64_128(b"The quick brown fox jumps over the lazy dog") == (
        0xE34BBC7BBC071B6C,
        0x7A433CA9C49A9347,
    )


def test_bit_positions_as_apaches_broker_wrote_them() -> None:
    # consumerFilter.json of Apache 4.9.8's broker, default filter (20 %, 32 consumers).
    bloom = BloomFilter(20, 32)
    assert bloom.bit_positions("CG-push-sql92-selector#Conf-push-sql92-selector") == [75, 70, 65]

"""The size of an index file from its slot and entry counts (Apache's ``IndexFile`` layout).

A 40-byte header, ``maxHashSlotNum`` 4-byte hash slots, then ``maxIndexNum`` 20-byte entries.
Apache sizes the file as a Java int, so the counts a broker may be configured with are those
whose file fits one (``INDEX_FILE_MAX``); the config check and the store both use this.
"""

from typing import Final

INDEX_HEADER_SIZE: Final = 40
HASH_SLOT_SIZE: Final = 4
INDEX_ENTRY_SIZE: Final = 20
INDEX_FILE_MAX: Final = (1 << 31) - 1
"""The largest index file: Apache's ``IndexFile`` holds its size in a Java int."""


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE

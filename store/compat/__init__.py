"""Drop-in adapters for the memory APIs memlens grew from.

``store.compat.loomflow`` (loomflow's ``Memory`` protocol), ``store.compat.syndarix``
(syndarix's ``WorkingMemory``) and ``store.compat.arshai`` (Arshai's ``IMemoryManager``).
Each converts shapes only: storage, ranking and tenancy are the store's. Importing this
package imports none of them, nor loomflow or arshai.
"""

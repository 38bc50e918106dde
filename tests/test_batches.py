"""One bucket of compiled batch sizes (jcsol.batches.bucket) for the live learner and the estimator."""

from jcsol.batches import bucket


def test_a_batch_is_padded_to_the_next_power_of_two_unless_its_size_is_given():
    powers = [2**k for k in range(12)]
    for n in range(1, 2049):
        assert bucket(n) == min(p for p in powers if p >= n)
        assert bucket(n, at_least=16) == max(16, bucket(n))  # the estimator's batches
    assert bucket(0) == 1
    assert bucket(300, (300, 1000)) == 300
    assert bucket(301, (300, 1000)) == 512

"""The Celery client side (`vocab retrain`): short connection retries and one-line errors when Redis is away.

Only the process that enqueues and waits is changed; workers keep Celery's patient reconnecting.
"""

from __future__ import annotations

from celery import Celery
from kombu.utils.url import maybe_sanitize_url

from farm.errors import FarmError

#: One quick retry instead of Celery's 20 (result backend) or 100 (broker) with growing sleeps.
FAST_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


class BrokerError(FarmError):
    """The Celery broker or result backend (Redis) cannot be reached."""


def one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def configure_client(app: Celery, timeout: float = 3.0) -> None:
    """Make this process's producer and result backend give up after one short retry."""
    app.conf.update(
        broker_connection_timeout=timeout,
        broker_connection_max_retries=1,
        task_publish_retry_policy=FAST_RETRY,
        redis_socket_connect_timeout=timeout,
        result_backend_transport_options={**(app.conf.result_backend_transport_options or {}),
                                          "retry_policy": FAST_RETRY},
    )


def check_reachable(app: Celery, timeout: float = 3.0) -> None:
    """Prove the broker and the result backend answer, or raise a one-line BrokerError."""
    broker = maybe_sanitize_url(app.conf.broker_url)
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0.2, interval_max=0.2,
                                   timeout=timeout)
    except Exception as e:  # kombu and redis raise their own connection errors
        raise BrokerError(f"cannot reach the Celery broker at {broker}: {one_line(e)}") from None
    backend_url = maybe_sanitize_url(str(app.conf.result_backend))
    try:
        client = getattr(app.backend, "client", None)
        if client is not None and hasattr(client, "ping"):
            client.ping()
    except Exception as e:
        raise BrokerError(f"cannot reach the Celery result backend at {backend_url}: {one_line(e)}") from None


def prepare_client(app: Celery) -> None:
    configure_client(app)
    check_reachable(app)

"""One goal of the calibration node, run by the task API in a worker process.

The node never runs the core in its own process: a goal becomes a :class:`Job`, a process
forked from ``multiprocessing``'s *forkserver* (a fresh interpreter started at the first
goal, which imports the numerical libraries once: nothing of the node's DDS threads is
forked, and a goal does not pay 2-3 s of imports) calls the task's ``run`` (``figaroh_ros.tasks``, the same function the command line
calls) and sends back, over a pipe, structured messages only:

* :class:`figaroh_ros.progress.Progress` while it works (the node makes them feedback),
* :class:`Partial` results before the end (a geometric calibration's nominal layer as soon
  as its postures are read: the node shows it in RViz while the calibration runs),
* at the end either the :class:`figaroh_ros.tasks.TaskOutcome` or a :class:`Failure`
  (the error's class name, its ``code`` and its message).

Cancelling terminates the worker at once; a worker that dies (killed, segfault, out of
memory) ends as ``WORKER_CRASHED`` with its exit code, and the node goes on serving.
No text of the core is parsed anywhere.
"""
from __future__ import annotations

import multiprocessing
import signal
import traceback
from dataclasses import dataclass
from typing import Callable, Union

from figaroh_ros import tasks
from figaroh_ros.errors import CANCELED, WORKER_CRASHED, FigarohError
from figaroh_ros.progress import Progress, Stage
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.threads import limited_threads

# the forkserver imports these once; each worker forked from it starts with them loaded
PRELOAD = ["numpy", "scipy.linalg", "scipy.optimize", "pinocchio", "yaml",
           "figaroh_ros.tasks.calibrate", "figaroh_ros.tasks.identify"]
CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload(PRELOAD)
GEOMETRIC, DYNAMIC, PLAN_TRAJECTORY = "geometric", "dynamic", "plan_trajectory"
PAYLOAD = "payload"


@dataclass(frozen=True)
class Job:
    """What a worker runs: the task, its config, the recordings, the start model and the
    output folder."""

    task: str                       # GEOMETRIC | DYNAMIC | PLAN_TRAJECTORY | PAYLOAD
    config: str
    out: str
    bags: tuple[str, ...] = ()
    urdf: str | None = None         # the model to start from (None: the config's)


@dataclass(frozen=True)
class Failure:
    """Why a job ended without an outcome; ``code`` is an ``error_code`` of the actions."""

    code: int
    kind: str                       # the error class (ConfigError ...), or Canceled / Crashed
    message: str


@dataclass(frozen=True)
class Partial:
    """What a job has to show before it ends: ``name`` says what ``value`` is."""

    name: str                       # POSTURES_NOMINAL
    value: object


POSTURES_NOMINAL = "postures_nominal"   # PostureFit (calibration.markers) of tasks.calibrate
Ended = Union[TaskOutcome, Failure]


def call_task(job: Job, progress: Callable[[object], None]) -> TaskOutcome:
    """The task API call of a job (in the worker process: the node itself never loads
    the task modules); ``progress`` takes its :class:`Progress` and :class:`Partial`
    messages."""
    if job.task == GEOMETRIC:
        return tasks.calibrate.run(
            job.config, bags=list(job.bags), urdf=job.urdf, out=job.out, progress=progress,
            on_nominal=lambda fit: progress(Partial(POSTURES_NOMINAL, fit)))
    if job.task == DYNAMIC:
        return tasks.identify.run(job.config, bag=job.bags[0], urdf=job.urdf,
                                  out=job.out, progress=progress)
    if job.task == PLAN_TRAJECTORY:
        return tasks.plan_trajectory.run(job.config, out=job.out, progress=progress)
    if job.task == PAYLOAD:
        return tasks.payload.run(job.config, bag=job.bags[0], out=job.out,
                                 progress=progress)
    raise ValueError(f"unknown task {job.task!r}")


def worker_main(job: Job, conn) -> None:
    """Entry point of the worker process: run the job, send what happened."""
    try:
        with limited_threads():           # one BLAS thread: the answer never depends on load
            message: object = call_task(job, conn.send)
    except FigarohError as exc:
        message = Failure(exc.code, type(exc).__name__, str(exc))
    except Exception as exc:          # a bug of the core: say so, with its traceback
        traceback.print_exc()
        message = Failure(WORKER_CRASHED, type(exc).__name__,
                          f"unexpected {type(exc).__name__} in the worker: {exc}")
    conn.send(message)
    conn.close()


def exit_reason(code: int | None) -> str:
    """``exit code 1`` / ``killed by SIGKILL`` of a finished process."""
    if code is not None and code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


class Worker:
    """A started worker process and the reading end of its pipe."""

    def __init__(self, job: Job):
        self.conn, child = CONTEXT.Pipe(duplex=False)
        self.process = CONTEXT.Process(target=worker_main, args=(job, child), daemon=True,
                                     name=f"figaroh-{job.task}")
        self.process.start()
        child.close()                 # the worker holds the only writing end: EOF = death

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def receive(self, timeout: float):
        """The next message, None when nothing came within ``timeout``; EOFError when the
        worker died without a last word."""
        return self.conn.recv() if self.conn.poll(timeout) else None

    def crashed(self) -> Failure:
        self.process.join(timeout=5.0)
        return Failure(WORKER_CRASHED, "Crashed", "the worker process died "
                       f"({exit_reason(self.process.exitcode)}) before finishing its goal")

    def stop(self) -> None:
        """End the worker now (SIGTERM, then SIGKILL), close the pipe."""
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=2.0)
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=2.0)
        self.conn.close()


def run_job(job: Job, on_progress: Callable[[Progress], None],
            cancel_requested: Callable[[], bool], on_start=lambda pid: None,
            poll_s: float = 0.05,
            on_partial: Callable[[Partial], None] = lambda p: None) -> Ended:
    """Run ``job`` in a worker process: progress to ``on_progress`` and partial results
    to ``on_partial`` as they come; the outcome, or the failure (the worker's error,
    CANCELED when ``cancel_requested()`` turned true, WORKER_CRASHED when it died)."""
    on_progress(Progress(Stage.STARTING, 0.0, f"starting the {job.task} worker"))
    worker = Worker(job)
    on_start(worker.pid)
    try:
        while True:
            if cancel_requested():
                return Failure(CANCELED, "Canceled", "canceled: the worker was terminated")
            try:
                message = worker.receive(poll_s)
            except EOFError:
                return worker.crashed()
            if isinstance(message, Progress):
                on_progress(message)
            elif isinstance(message, Partial):
                on_partial(message)
            elif message is not None:
                return message
    finally:
        worker.stop()

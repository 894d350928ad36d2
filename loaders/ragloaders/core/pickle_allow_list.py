"""The globals a data pickle may name, each with the kind of value it stands for (a handler of Resolver)."""

from __future__ import annotations

from .pickled_values import Global


def _module(module: str) -> str:
    """numpy 1 names `numpy.core`, numpy 2 `numpy._core`; pandas' classes are named from several modules."""
    if module.startswith("numpy.core"):
        return "numpy._core" + module[len("numpy.core"):]
    return module


PANDAS_NAMES = {
    "DataFrame": "frame", "Series": "series", "BlockManager": "manager", "SingleBlockManager": "manager",
    "Index": "index", "RangeIndex": "range", "MultiIndex": "multi", "DatetimeIndex": "index",
    "DatetimeArray": "datetimes", "Categorical": "categorical", "CategoricalDtype": "dtype",
    "DatetimeTZDtype": "dtype", "StringDtype": "dtype", "BooleanDtype": "dtype", "Int8Dtype": "dtype",
    "Int16Dtype": "dtype", "Int32Dtype": "dtype", "Int64Dtype": "dtype", "UInt8Dtype": "dtype", "UInt16Dtype": "dtype",
    "UInt32Dtype": "dtype", "UInt64Dtype": "dtype", "Float32Dtype": "dtype", "Float64Dtype": "dtype",
    "IntegerArray": "masked", "FloatingArray": "masked", "BooleanArray": "masked", "StringArray": "strings",
    "ArrowStringArray": "arrow_strings", "NA": "missing", "NaT": "missing",
}
PANDAS_MODULES = (
    "pandas", "pandas.arrays", "pandas.core.frame", "pandas.core.series", "pandas.core.internals.managers",
    "pandas.core.indexes.base", "pandas.core.indexes.range", "pandas.core.indexes.multi",
    "pandas.core.indexes.datetimes", "pandas.core.arrays.datetimes", "pandas.core.arrays.categorical",
    "pandas.core.arrays.integer", "pandas.core.arrays.floating", "pandas.core.arrays.boolean",
    "pandas.core.arrays.string_", "pandas.core.arrays.string_arrow", "pandas.core.dtypes.dtypes",
    "pandas._libs.missing",
)
FUNCTIONS = {
    ("builtins", "set"): "set", ("builtins", "frozenset"): "frozenset", ("builtins", "slice"): "slice",
    ("builtins", "bytearray"): "bytearray", ("builtins", "bytes"): "bytes", ("builtins", "getattr"): "getattr",
    ("_codecs", "encode"): "encode",
    ("datetime", "date"): "date", ("datetime", "datetime"): "datetime", ("datetime", "time"): "time",
    ("datetime", "timedelta"): "timedelta", ("datetime", "timezone"): "timezone", ("zoneinfo", "ZoneInfo"): "zoneinfo",
    ("numpy._core.multiarray", "_reconstruct"): "reconstruct", ("numpy._core.multiarray", "scalar"): "scalar",
    ("numpy._core.numeric", "_frombuffer"): "frombuffer", ("numpy", "dtype"): "numpy_dtype",
    ("numpy", "ndarray"): "ndarray",
    ("pandas._libs.internals", "_unpickle_block"): "block",
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"): "ndarray_backed",
    ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"): "timestamp",
    ("pandas._libs.tslibs.nattype", "_nat_unpickle"): "nat", ("pandas._libs.tslibs.nattype", "__nat_unpickle"): "nat",
    ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"): "timedelta64",
    ("pandas.core.indexes.base", "_new_Index"): "new_index",
    ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"): "new_index",
    ("pyarrow.lib", "_restore_array"): "arrow_array", ("pyarrow.lib", "type_for_alias"): "arrow_type",
    ("pyarrow.lib", "py_buffer"): "arrow_buffer",
    ("pytz", "_p"): "pytz", ("pytz", "_UTC"): "pytz",
    **{("pandas._libs.tslibs.offsets", name): "offset" for name in ("Day", "Hour", "Minute", "Second", "Milli", "Micro",
                                                                      "Nano")},
    **{(module, name): kind for module in PANDAS_MODULES for name, kind in PANDAS_NAMES.items()},
}


def kind_of(global_: Global) -> str | None:
    """What an allowed global is (a key of Resolver's handlers); None if it is not allowed."""
    return FUNCTIONS.get((_module(global_.module), global_.name))
